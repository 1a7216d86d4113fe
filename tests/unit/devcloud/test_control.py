"""The control plane's start-up commands, on the gunicorn installed."""

from __future__ import annotations

import testtools
from gunicorn import config as gunicorn_config

from devcloud import control


class TestGunicornOptions(testtools.TestCase):
    def test_the_control_socket_is_turned_off_where_gunicorn_has_one(self) -> None:
        # 2025.1's gunicorn (23.0) has no control socket and refuses the option.
        known = any("--no-control-socket" in (s.cli or ()) for s in gunicorn_config.KNOWN_SETTINGS)
        self.assertEqual(["--no-control-socket"] if known else [], control._no_control_socket())
