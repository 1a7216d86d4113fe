# Nova's eventlet patching is applied by the test package (tests/__init__.py),
# before any test module is imported.
