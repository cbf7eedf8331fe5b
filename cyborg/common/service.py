"""What every cyborg daemon shares: preparing config and logging, and the
RPC service that hosts a manager."""

import gc
import logging as std_logging
import os
import select
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
from cyborg.common import stopping
from cyborg import conf as cyborg_conf
from cyborg.conf import opts as conf_opts
from cyborg import objects
from cyborg import version

LOG = logging.getLogger(__name__)
CONF = cyborg_conf.CONF

#: Seconds from SIGTERM or SIGINT to the end of a daemon, at most: what
#: has not stopped by then is left behind (see run_in_foreground).
STOP_TIMEOUT = 3.5
#: Seconds from the signal a start under way has to end (its waits end
#: at the signal), before the process ends without stopping it.
START_WAIT = 1.5


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
        server = rpc.get_server(
            target, endpoints(self.manager),
            nonce_store=getattr(self.manager, '_rpc_nonces', None))
        # Waits for the broker (and a guest for its exchange) until the
        # process is told to stop; only a server that started is stopped.
        server.start()
        self.rpcserver = server
        init_host = getattr(self.manager, 'init_host', None)
        if init_host:
            stopping.check()
            init_host()
        for interval, task in getattr(self.manager, 'periodic_tasks',
                                      lambda: [])():
            timer = PeriodicTask(interval, _guarded(task))
            timer.start()
            self.timers.append(timer)
        LOG.info('Started %s on topic %s as %s', type(self.manager).__name__,
                 self.topic, self.host)

    #: Seconds stop() gives the RPC server to finish the requests it
    #: runs (a bind, a report) and to close its connection.
    SERVER_STOP_WAIT = 1.5

    def stop(self, graceful=True):
        """Stop the timers, the RPC server, then the manager
        (``del_host``), each given a part of STOP_TIMEOUT: what is not
        done in its time is left running (in daemon threads, which end
        with the process) and the next part goes on. A request cut off
        so leaves its work where the next start resumes it (an ARQ
        mid-bind is recovered, a report is sent again)."""
        deadline = time.monotonic() + STOP_TIMEOUT - 0.5
        for timer in self.timers:
            timer.stop()
        waited = time.monotonic() + PeriodicTask.STOP_WAIT
        for timer in self.timers:
            timer.join(max(0.0, waited - time.monotonic()))
        self.timers = []
        if self.rpcserver is not None:
            bounded('The RPC server', self._stop_server,
                    min(deadline, time.monotonic() + self.SERVER_STOP_WAIT))
        del_host = getattr(self.manager, 'del_host', None)
        if del_host:
            bounded('%s.del_host' % type(self.manager).__name__, del_host,
                    deadline)
        if self.metrics is not None:
            self.metrics.stop()
        super().stop(graceful=graceful)
        LOG.info('Stopped %s on topic %s', type(self.manager).__name__,
                 self.topic)

    def _stop_server(self):
        server, self.rpcserver = self.rpcserver, None
        server.stop()
        server.wait()


class Step(threading.Thread):
    """``step()`` run in a daemon thread of its own, which the caller
    waits for until a deadline: the daemon's start and stop, so that a
    signal is heard, and a stop ends, whatever they wait for."""

    def __init__(self, name, step, done=None):
        super().__init__(name='cyborg-%s' % name, daemon=True)
        self.step = step
        self.error = None
        #: Whether step() returned or raised (set before ``done()`` is
        #: called: the thread may be alive a moment longer).
        self.ended = False
        self._done = done

    def run(self):
        try:
            self.step()
        except BaseException as e:
            self.error = e
        finally:
            self.ended = True
            if self._done is not None:
                self._done()

    def finished(self, deadline):
        """Whether it finished by ``deadline`` (time.monotonic())."""
        self.join(max(0.0, deadline - time.monotonic()))
        return not self.is_alive()


def bounded(what, step, deadline):
    """Run ``step()`` until ``deadline`` (time.monotonic()); its failure,
    or that it did not end in time, is logged, and the caller goes on."""
    runner = Step(what, step)
    runner.start()
    if not runner.finished(deadline):
        LOG.warning('%s did not stop in time; left behind', what)
    elif runner.error is not None:
        LOG.warning('%s failed while stopping: %s', what, runner.error,
                    exc_info=runner.error)


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
    # The workers get [DEFAULT] graceful_shutdown_timeout to stop (3 s,
    # cyborg.conf.opts), then are killed.
    status = launcher.wait()
    LOG.info('%s stopped', CONF.prog or 'cyborg')
    return status


def run_in_foreground(svc, conf=CONF):
    """Start ``svc`` in this process and stop it on SIGTERM or SIGINT
    (status 0); SIGHUP re-reads the mutable options of the config files.

    One process, where oslo.service's launcher would fork a worker under a
    parent that only watches it: the agent, the conductor and the
    all-in-one serve from one process, and a supervisor (systemd) restarts
    it. A failure to start is an exit with an error (status 1), not a
    respawn loop.

    The signal is heard in every state: the start and the stop run in
    threads of their own while this one waits for either, and the
    process ends at most STOP_TIMEOUT seconds after the signal. A start
    under way ends first (its waits for the broker, an exchange, a
    retry's pause end when the process is told to stop,
    :mod:`cyborg.common.stopping`; one that has not ended START_WAIT
    seconds after the signal is left as it is), then ``svc.stop()``
    stops what it started; what has not ended by the deadline is left
    behind, logged.
    """
    asked = []
    name = conf.prog or 'cyborg'

    def on_signal(signum, _frame):
        if asked:
            return  # a second Ctrl-C while stopping says nothing new
        LOG.info('%s received, stopping', signal.Signals(signum).name)
        asked.append(time.monotonic())
        stopping.request()

    def on_hangup(_signum, _frame):
        LOG.info('SIGHUP received, reloading the mutable options')
        conf.mutate_config_files()

    wakeup = _Wakeup()
    try:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, on_signal)
        signal.signal(signal.SIGHUP, on_hangup)
        starting = Step('start', svc.start, done=wakeup.wake)
        starting.start()
        wakeup.wait_until(lambda: asked or starting.ended)
        if not asked:
            if starting.error is not None:
                LOG.error('Could not start: %s', starting.error,
                          exc_info=starting.error)
                _stop_quietly(svc)
                return 1
            # What starting made (modules, config, the app, the pools)
            # lives as long as the process: no collection of the oldest
            # generation walks it again. A full collection walked some
            # 170,000 of those objects, a pause of 100 ms or more in the
            # middle of a request. (Collected first, so that no garbage
            # of the start is kept for good.)
            gc.collect()
            gc.freeze()
            wakeup.wait_until(lambda: asked)
    finally:
        wakeup.close()
    return _stop(svc, starting, asked[0], name)


class _Wakeup:
    """What the main thread of run_in_foreground sleeps on: a pipe that a
    signal (``signal.set_wakeup_fd``) and the end of the start write to.
    Not an Event: a handler that sets an Event the main thread waits on
    may run inside that wait, which holds the Event's lock, and hang."""

    def __init__(self):
        self._read, self._write = os.pipe()
        for fd in (self._read, self._write):
            os.set_blocking(fd, False)
        self._previous = signal.set_wakeup_fd(self._write)
        # A start left behind may end after close(): its wake-up must not
        # write to a descriptor the number may have gone to since.
        self._lock = threading.Lock()

    def wake(self):
        with self._lock:
            if self._write is None:
                return
            try:
                os.write(self._write, b'\0')
            except BlockingIOError:
                pass  # full: a wake-up is pending already

    def wait_until(self, done):
        while not done():
            select.select([self._read], [], [])
            try:
                while os.read(self._read, 512):
                    pass
            except BlockingIOError:
                pass

    def close(self):
        signal.set_wakeup_fd(self._previous)
        with self._lock:
            os.close(self._read)
            os.close(self._write)
            self._write = None


def _stop(svc, starting, asked, name):
    """Stop ``svc`` once its start (``starting``) ended, within
    STOP_TIMEOUT seconds of ``asked`` (the signal's time.monotonic());
    the exit status: 0, a stop was asked for."""
    deadline = asked + STOP_TIMEOUT
    if not starting.finished(asked + START_WAIT):
        # In a try to connect (a broker that takes connections and never
        # answers holds one for seconds), a query, a request: what it
        # started is left to the end of the process.
        LOG.warning('The start did not end within %.1f s of the signal; '
                    'exiting without stopping what it started', START_WAIT)
    else:
        if starting.error is not None:
            LOG.info('The start was cut short: %s', starting.error)
        stopper = Step('stop', svc.stop)
        stopper.start()
        if not stopper.finished(deadline):
            LOG.warning('Not stopped within %.1f s of the signal; exiting '
                        'with what is left (threads %s)', STOP_TIMEOUT,
                        ', '.join(sorted(
                            {t.name for t in threading.enumerate()
                             if t is not threading.current_thread()})))
        elif stopper.error is not None:
            LOG.warning('Error while stopping: %s', stopper.error,
                        exc_info=stopper.error)
    LOG.info('%s stopped', name)
    return 0


def exit_on_signal():
    """Until run_in_foreground takes over: SIGTERM or SIGINT ends the
    process at once, with status 0. For what a daemon does before its
    service starts and nothing is to be undone: the checks before it
    serves, which wait through oslo.db's retries for a database that does
    not answer."""
    def on_signal(signum, _frame):
        LOG.info('%s received while preparing to start; stopped',
                 signal.Signals(signum).name)
        finish(0)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, on_signal)


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
    """Stop what a failed start left, for STOP_TIMEOUT seconds at most."""
    runner = Step('stop', svc.stop)
    runner.start()
    if not runner.finished(time.monotonic() + STOP_TIMEOUT):
        LOG.debug('Stopping after a failed start did not end in time')
    elif runner.error is not None:
        LOG.debug('Error while stopping after a failed start',
                  exc_info=runner.error)
