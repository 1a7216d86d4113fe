"""The live cloud through its public APIs (openstacksdk): what runs where, and moving it."""
