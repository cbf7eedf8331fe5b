"""What every cyborg daemon shares: preparing config and logging, and the
RPC service that hosts a manager."""

import gc
import logging as std_logging
import os
import signal
import sys
import threading
import time

from oslo_log import log as logging
import oslo_messaging as messaging
from oslo_service import service

from cyborg.common import config_check
from cyborg.common import exception
from cyborg.common import keys
from cyborg.common import metrics
from cyborg.common import rpc
from cyborg import conf as cyborg_conf
from cyborg.conf import opts as conf_opts
from cyborg import objects
from cyborg import version

LOG = logging.getLogger(__name__)
CONF = cyborg_conf.CONF


def prepare_service(argv=None, conf=CONF, default_config_files=None,
                    prog=None, description=None):
    """Parse the command line and config files and check them, set up
    logging.

    A configuration mistake (a missing or unreadable file, a syntax
    error, a bad value) ends the process with one line on stderr and exit
    status 2 before anything starts; options and groups no library knows
    are logged as a warning.
    """
    argv = sys.argv if argv is None else argv
    logging.register_options(conf)
    rpc.set_defaults()
    conf_opts.set_common_defaults()
    prog = prog or os.path.basename(argv[0] if argv else 'cyborg')
    try:
        config_check.parse(conf, argv[1:], project='cyborg', prog=prog,
                           version=version.version_string(),
                           default_config_files=default_config_files,
                           description=description)
        config_check.check(conf)
    except config_check.ConfigError as e:
        print('%s: error: %s' % (prog, e), file=sys.stderr)
        raise SystemExit(config_check.EXIT_STATUS) from None
    logging.setup(conf, 'cyborg')
    unknown = config_check.unknown_options(conf)
    if unknown:
        LOG.warning('The configuration files set options that cyborg does '
                    'not know (a misspelling?); they are ignored: %s',
                    config_check.describe_unknown(unknown))
    objects.register_all()


def endpoints(manager):
    """The objects the RPC server of ``manager`` serves: those it lists
    in ``endpoints`` (the agent's manager and its operators' endpoints),
    or the manager alone."""
    return getattr(manager, 'endpoints', None) or [manager]


class RPCService(service.Service):
    """An RPC server on ``topic`` serving ``manager``'s endpoints
    (``endpoints``).

    The manager may define ``init_host()``, ``del_host()`` and
    ``periodic_tasks()`` returning ``(interval, callable)`` pairs that run
    in :class:`PeriodicTask` threads for the life of the service.
    """

    def __init__(self, host, topic, manager, conf=CONF):
        super().__init__()
        self.host = host
        self.topic = topic
        self.manager = manager
        self.conf = conf
        self.rpcserver = None
        self.timers = []
        self.metrics = None

    def identity(self):
        """Who this service is on RPC: the conductor, or the agent of its
        host."""
        if self.topic == rpc.CONDUCTOR_TOPIC:
            return keys.CONDUCTOR
        return keys.host_identity(self.host)

    def start(self):
        super().start()
        self.metrics = metrics.serve(self.conf)
        if not rpc.initialized():
            rpc.init(self.conf, identity=self.identity())
        target = messaging.Target(topic=rpc.topic(self.conf, self.topic),
                                  server=self.host)
        self.rpcserver = rpc.get_server(
            target, endpoints(self.manager),
            nonce_store=getattr(self.manager, '_rpc_nonces', None))
        self.rpcserver.start()
        init_host = getattr(self.manager, 'init_host', None)
        if init_host:
            init_host()
        for interval, task in getattr(self.manager, 'periodic_tasks',
                                      lambda: [])():
            timer = PeriodicTask(interval, _guarded(task))
            timer.start()
            self.timers.append(timer)
        LOG.info('Started %s on topic %s as %s', type(self.manager).__name__,
                 self.topic, self.host)

    def stop(self, graceful=True):
        for timer in self.timers:
            timer.stop()
        for timer in self.timers:
            timer.join(PeriodicTask.STOP_WAIT)
        self.timers = []
        if self.rpcserver is not None:
            self.rpcserver.stop()
            self.rpcserver.wait()
        del_host = getattr(self.manager, 'del_host', None)
        if del_host:
            del_host()
        if self.metrics is not None:
            self.metrics.stop()
        super().stop(graceful=graceful)
        LOG.info('Stopped %s on topic %s', type(self.manager).__name__,
                 self.topic)


class PeriodicTask(threading.Thread):
    """Runs ``task`` at once, then every ``interval`` seconds (start to
    start), until :meth:`stop`, which wakes it at once.

    Not oslo.service's timers: each keeps a futurist worker thread that
    looks for its end only once a second, so a daemon took a second or
    more to exit after stopping.
    """

    #: Seconds stop() waits for a task that is running to finish; the
    #: thread is a daemon thread, which the process does not wait for.
    STOP_WAIT = 1.0

    def __init__(self, interval, task):
        super().__init__(name='periodic-%s' % task.__name__, daemon=True)
        self.interval = interval
        self.task = task
        self._halt = threading.Event()

    def run(self):
        while not self._halt.is_set():
            started = time.monotonic()
            self.task()
            if self._halt.wait(max(0.0, started + self.interval
                                   - time.monotonic())):
                return

    def stop(self):
        self._halt.set()


def _guarded(task):
    """A periodic task whose failure is logged, not fatal to its timer."""
    def run():
        try:
            task()
        except exception.ServiceUnavailable as e:
            # The database (say) is down: the next run tries again.
            LOG.warning('Periodic task %s failed: %s', task.__name__, e)
        except Exception:
            LOG.exception('Periodic task %s failed', task.__name__)
    run.__name__ = task.__name__
    return run


def launch(services, workers=1):
    """Run ``services`` under oslo.service's launcher until SIGTERM or
    SIGINT: a parent process that forks ``workers`` worker processes and
    restarts one that dies. For the API, whose workers share its port."""
    launcher = service.ServiceLauncher(CONF, restart_method='mutate')
    for svc in services:
        launcher.launch_service(svc, workers=workers)
    return launcher.wait()


def run_in_foreground(svc, conf=CONF):
    """Start ``svc`` in this process and stop it on SIGTERM or SIGINT;
    SIGHUP re-reads the mutable options of the config files.

    One process, where oslo.service's launcher would fork a worker under a
    parent that only watches it: the agent, the conductor and the
    all-in-one serve from one process, and a supervisor (systemd) restarts
    it. A failure to start is an exit with an error, not a respawn loop.
    """
    stopping = threading.Event()
    name = conf.prog or 'cyborg'

    def on_signal(signum, _frame):
        if stopping.is_set():
            return  # a second Ctrl-C while stopping says nothing new
        LOG.info('%s received, stopping', signal.Signals(signum).name)
        stopping.set()

    def on_hangup(_signum, _frame):
        LOG.info('SIGHUP received, reloading the mutable options')
        conf.mutate_config_files()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, on_signal)
    signal.signal(signal.SIGHUP, on_hangup)
    try:
        svc.start()
    except Exception as e:
        LOG.exception('Could not start: %s', e)
        _stop_quietly(svc)
        return 1
    # What starting made (modules, config, the app, the pools) lives as
    # long as the process: no collection of the oldest generation walks
    # it again. A full collection walked some 170,000 of those objects,
    # a pause of 100 ms or more in the middle of a request. (Collected
    # first, so that no garbage of the start is kept for good.)
    gc.collect()
    gc.freeze()
    # A signal wakes this wait; the timeout only bounds it.
    while not stopping.wait(3600):
        pass
    svc.stop()
    LOG.info('%s stopped', name)
    return 0


def finish(status):
    """End the process with ``status`` once its service has stopped:
    flush the log and the standard streams, and skip the interpreter's
    teardown of its thousands of modules and objects, which took a
    daemon more than a second after it had stopped (nothing is left to
    save then: every part stopped and the databases committed)."""
    std_logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


def _stop_quietly(svc):
    try:
        svc.stop()
    except Exception:
        LOG.debug('Error while stopping after a failed start', exc_info=True)
