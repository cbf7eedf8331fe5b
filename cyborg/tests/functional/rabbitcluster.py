"""A three-node RabbitMQ cluster of a test's own, as clouds run it (Kolla-
Ansible, OpenStack-Ansible), for the tests that kill a node under load.

Each node is a :class:`cyborg.tests.functional.faults.PrivateRabbit`: a
node name, AMQP and distribution ports and a data directory of its own
(``RABBITMQ_MNESIA_BASE``, ``RABBITMQ_LOG_BASE``, ``RABBITMQ_CONFIG_FILE``
there), killed with SIGKILL as a crash would and started again on the
same ports and data. The nodes share the Erlang cookie of the rabbitmq
user (``/var/lib/rabbitmq/.erlang.cookie``: Debian's wrappers run the
node and ``rabbitmqctl`` as that user, whose home it is), which is what
lets them, and ``rabbitmqctl``, talk to each other. The second and third
nodes join the first with ``rabbitmqctl join_cluster``; the shared broker
is never touched.

The interface other tests use: :meth:`RabbitCluster.started`,
:meth:`~RabbitCluster.transport_url`, :meth:`~RabbitCluster.ctl`,
:meth:`~RabbitCluster.kill`, :meth:`~RabbitCluster.start`,
:meth:`~RabbitCluster.leader_of`, :meth:`~RabbitCluster.stop` (and
:meth:`~RabbitCluster.queues`, :meth:`~RabbitCluster.connections`).
"""

import concurrent.futures
import json
import subprocess
import time

from cyborg.tests import services
from cyborg.tests.functional import faults

#: The lines each node's rabbitmq.conf adds: a node cut off from the
#: majority stops serving (what the deployment tools set). A quorum
#: queue has a member on every node of the cluster (RabbitMQ's default
#: initial group size).
CONFIG = 'cluster_partition_handling = pause_minority\n'


class RabbitCluster:
    """Three RabbitMQ nodes of ``test``'s own, clustered; stopped (every
    process of every node killed, the data removed) when the test cleans
    up, or by :meth:`stop`.

    ``problem`` is why it cannot run here (no rabbitmq-server, a node did
    not start or join), else None; :meth:`started` skips the test then
    (or fails it under ``CYBORG_TEST_REQUIRE_SERVICES``)."""

    SIZE = 3
    #: Seconds a node may take to be a running member of the cluster.
    JOIN_TIMEOUT = 90

    def __init__(self, test, size=SIZE):
        self.test = test
        self.nodes = [faults.PrivateRabbit(test) for _ in range(size)]
        self.problem = next((n.problem for n in self.nodes if n.problem),
                            None)
        if self.problem is None:
            for node in self.nodes:
                with open('%s/rabbitmq.conf' % node.directory, 'a') as f:
                    f.write(CONFIG)
        # After each node's own cleanups (which run in reverse order).
        test.addCleanup(self.stop)

    @property
    def nodenames(self):
        return [node.nodename for node in self.nodes]

    @property
    def ports(self):
        """The AMQP ports, node by node."""
        return [node.port for node in self.nodes]

    def transport_url(self, user='guest', password='guest', vhost=''):
        """oslo.messaging's URL of the cluster: every node, in order."""
        return 'rabbit://%s/%s' % (','.join(
            '%s:%s@127.0.0.1:%d' % (user, password, port)
            for port in self.ports), vhost)

    def _running(self):
        """A node that answers (for ``rabbitmqctl``), the first if all."""
        for node in self.nodes:
            if node.answers():
                return node
        raise AssertionError('no node of the cluster is running')

    def ctl(self, *args, node=None):
        """``rabbitmqctl`` on node ``node`` (an index; by default the first
        that answers): its output. Raises CalledProcessError, with the
        command's output, when it fails."""
        target = self.nodes[node] if node is not None else self._running()
        try:
            return target.ctl(*args)
        except subprocess.CalledProcessError as e:
            raise AssertionError('rabbitmqctl %s failed (%s):\n%s%s' % (
                ' '.join(args), e.returncode, e.stdout, e.stderr)) from None

    def running_nodes(self, node=None):
        """The names of the cluster's running nodes, as node ``node`` (by
        default the first that answers) sees them."""
        status = json.loads(self.ctl('cluster_status', '--formatter',
                                     'json', node=node))
        return sorted(status.get('running_nodes', []))

    def start(self, i=None):
        """Start node ``i`` again (after :meth:`kill`) and wait until the
        cluster counts it running; with no ``i``, start and cluster every
        node (once). False, with ``problem`` set, when it did not."""
        if i is None:
            return self._start_all()
        node = self.nodes[i]
        if not node.start():
            self.problem = node.problem
            return False
        return self._wait_joined([i])

    def _start_all(self):
        if self.problem is not None:
            return False
        # The nodes boot at once (most of the time it takes is each VM's
        # own start), then the others join the first.
        with concurrent.futures.ThreadPoolExecutor(len(self.nodes)) as pool:
            started = list(pool.map(lambda node: node.start(), self.nodes))
        if not all(started):
            self.problem = next(n.problem for n in self.nodes if n.problem)
            return False
        first = self.nodes[0].nodename
        try:
            for i in range(1, len(self.nodes)):
                self.ctl('stop_app', node=i)
                self.ctl('join_cluster', first, node=i)
                self.ctl('start_app', node=i)
        except AssertionError as e:
            self.problem = str(e)
            return False
        return self._wait_joined(range(len(self.nodes)))

    def _wait_joined(self, indexes):
        wanted = {self.nodes[i].nodename for i in indexes}
        deadline = time.monotonic() + self.JOIN_TIMEOUT
        seen = []
        while time.monotonic() < deadline:
            try:
                self.ctl('await_startup', node=min(indexes))
                seen = self.running_nodes()
                if wanted <= set(seen):
                    return True
            except AssertionError as e:
                seen = str(e)
            time.sleep(0.5)
        self.problem = 'nodes %s did not join the cluster: %s' % (
            sorted(wanted), seen)
        return False

    def kill(self, i):
        """SIGKILL every process of node ``i`` (its VM, beam.smp, and the
        wrappers that started it), as a crash would; returns when none
        is left."""
        self.nodes[i].kill()

    def index_of(self, nodename):
        return self.nodenames.index(nodename)

    def queues(self, vhost='/'):
        """{name: (type, leader, members)} of the queues of ``vhost``
        (leader and members None for a classic queue)."""
        rows = json.loads(self.ctl(
            'list_queues', '-p', vhost, '--formatter', 'json', '--quiet',
            'name', 'type', 'leader', 'members'))
        return {row['name']: (row.get('type'), row.get('leader') or None,
                              row.get('members') or None) for row in rows}

    def connections(self):
        """{node index: {user: AMQP connections}} of the running nodes
        (a connection's node is the one whose port it reached)."""
        rows = json.loads(self.ctl('list_connections', '--formatter', 'json',
                                   '--quiet', 'user', 'port'))
        found = {}
        for row in rows:
            if row.get('port') in self.ports:
                users = found.setdefault(self.ports.index(row['port']), {})
                users[row['user']] = users.get(row['user'], 0) + 1
        return found

    def leader_of(self, queue, vhost='/'):
        """The index of the node that leads quorum queue ``queue``;
        AssertionError when there is no such quorum queue (or, for a
        moment after a leader died, no leader)."""
        kind, leader, _members = self.queues(vhost).get(queue,
                                                        (None, None, None))
        if kind != 'quorum' or not leader or leader not in self.nodenames:
            raise AssertionError('%s is not a quorum queue with a leader '
                                 '(%s, %s)' % (queue, kind, leader))
        return self.index_of(leader)

    def stop(self):
        """Kill every node (no-op for those already gone)."""
        for node in self.nodes:
            node.kill()

    @classmethod
    def started(cls, test, size=SIZE):
        """A started cluster of ``test``'s own; the test is skipped (or
        fails under CYBORG_TEST_REQUIRE_SERVICES) where none can run."""
        cluster = cls(test, size=size)
        cluster.start()
        if cluster.problem is not None:
            services.unavailable(test, cluster.problem)
        return cluster
