"""The conductor's one owner of Placement: one client per conductor, the
one generation-conflict retry, and a failed sync marking its host."""

from cyborg.common import context as cyborg_context
from cyborg.common import exception
from cyborg.conductor import liveness
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import placement_service
from cyborg.db import hosts as db_hosts
from cyborg.objects import host as host_obj
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures


def _conflict(code='placement.concurrent_update'):
    return exception.PlacementError(method='PUT', url='/x', status=409,
                                    detail='conflict', codes=[code])


class OneOwnerTest(base.TestCase):

    def test_every_workflow_uses_the_managers_service(self):
        manager = conductor_manager.ConductorManager('cond', self.conf)
        service = manager.placement
        self.assertIsInstance(service, placement_service.PlacementService)
        for user in (manager.devices, manager.reporting, manager.inventory,
                     manager.accelerators, manager.attachments):
            self.assertIs(service, user.placement, user)
        self.assertIs(manager.inventory, manager.binding.inventory)
        self.assertIs(service, service.sync.service)

    def test_the_periodic_retry_is_the_services(self):
        manager = conductor_manager.ConductorManager('cond', self.conf)
        # The shared checks run under the lease (leases.Lease.guard).
        tasks = [getattr(task, '__wrapped__', task)
                 for _interval, task in manager.periodic_tasks()]
        self.assertIn(manager.placement.retry_pending, tasks)

    def test_one_client_connected_once(self):
        client = object()
        service = placement_service.PlacementService(self.conf, client)
        self.assertIs(client, service.client)
        self.assertIs(client, service.sync.client)


class RetryOnConflictTest(base.TestCase):

    def test_generation_conflict_is_retried(self):
        attempts = []

        def write(attempt):
            attempts.append(attempt)
            if attempt < 3:
                raise _conflict()
            return 'done'
        self.assertEqual('done', placement_service.PlacementService
                         .retry_on_conflict(write, 'provider u'))
        self.assertEqual([1, 2, 3], attempts)

    def test_gives_up_after_the_last_attempt(self):
        attempts = []

        def write(attempt):
            attempts.append(attempt)
            raise _conflict()
        self.assertRaises(exception.PlacementError,
                          placement_service.PlacementService
                          .retry_on_conflict, write, 'consumer c',
                          attempts=2)
        self.assertEqual([1, 2], attempts)

    def test_other_conflicts_are_not_retried(self):
        attempts = []

        def write(attempt):
            attempts.append(attempt)
            raise _conflict('placement.duplicate_name')
        self.assertRaises(exception.PlacementError,
                          placement_service.PlacementService
                          .retry_on_conflict, write, 'provider u')
        self.assertEqual([1], attempts)


class _DownSync:

    def apply_tree(self, hostname, providers, names=None, fresh=False):
        raise exception.PlacementError(method='GET', url='/', status=503,
                                       detail='down')


class SyncFailedTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(cyborg_fixtures.Database(self, 'sqlite'))
        self.ctx = cyborg_context.get_admin_context()
        liveness.Liveness(self.conf).hello(self.ctx, host_obj.AgentHello(
            hostname='cmp-1', status='READY', endpoint='cmp-1',
            version='1', drivers=[]))

    def test_a_failed_sync_marks_the_host_pending(self):
        service = placement_service.PlacementService(self.conf, object())
        service.sync = _DownSync()
        self.assertFalse(service.sync_or_mark_pending(self.ctx, 'cmp-1', []))
        self.assertEqual(['cmp-1'], db_hosts.sync_pending_hosts(self.ctx))
        self.assertFalse(service.resync_host(self.ctx, 'cmp-1'))
        self.assertEqual(['cmp-1'], db_hosts.sync_pending_hosts(self.ctx))
