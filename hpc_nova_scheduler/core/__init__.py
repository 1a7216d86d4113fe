"""Placement logic shared by the Nova adapters, the simulator and the planners.

Nothing under this package may import Nova: the simulator and the planners
run without it.
"""
