"""pytest hooks of the end-to-end tests."""

from cyborg.tests.e2e import hardware


def pytest_sessionfinish(session, exitstatus):
    """The hardware tests' shared cloud stops with the session."""
    hardware.clean_up()
