"""The hosts of the agents (v2 API, microversion 2.5)."""

from cyborg.cli import output

FIELDS = ('hostname', 'status', 'last_seen_at', 'version', 'drivers')


class DriversColumn(output.JsonColumn):
    """A host's drivers: ``name (STATUS)`` in a table, the list in
    json/yaml."""

    def human_readable(self):
        return ', '.join('%s (%s)' % (d.get('name'), d.get('status'))
                         for d in self._value or ())


class ListHosts(output.Lister):
    """List the hosts with their agent's status and last heartbeat."""

    NOUN = 'hosts: no agent has said hello yet'

    def take_action(self, parsed_args):
        doc = self.app.client.v2('GET', '/hosts').json()
        return output.listing(doc['hosts'], FIELDS,
                              formatters={'drivers': DriversColumn})


COMMANDS = {
    'host-list': ListHosts,
}
