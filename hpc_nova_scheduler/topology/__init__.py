"""Network topology beyond one rack: levels, the tenant's constraints, BestFit, the tree.

See README.rst in this folder.
"""
