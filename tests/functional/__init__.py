# Nova's harness runs its services in eventlet green threads; libraries such
# as oslo.db keep per-thread state that must be created after the patching,
# whichever test module is imported first (as nova/tests/__init__.py does).
from nova import monkey_patch

monkey_patch.patch()
