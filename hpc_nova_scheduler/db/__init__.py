"""The plugin's own database: profiles, running applications, interference."""
