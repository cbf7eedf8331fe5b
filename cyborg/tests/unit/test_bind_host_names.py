"""The names a bind may give the host of its device (issue #44): Nova
sends nova-compute's ``[DEFAULT] host``, which need not be the agent's
``[DEFAULT] host``; a device of one host is never bound on another."""

import testtools

from cyborg.common import hostnames

SHORT = 'cmp-1'
FQDN = 'cmp-1.example.org'


def refusal(name, host, others=()):
    """``bind_host_refusal`` of ``name`` for a device of ``host``, with
    no provider names, when the hosts ``others`` are known too."""
    known = dict.fromkeys((host,) + tuple(others))
    return hostnames.bind_host_refusal(name, host, known)


class AcceptedNamesTest(testtools.TestCase):

    def test_the_agents_host(self):
        self.assertIsNone(refusal(SHORT, SHORT))

    def test_the_agents_provider_name(self):
        # nova-compute's host is the FQDN, the agent's the short name,
        # [agent] resource_provider_name the FQDN (Nova's node name).
        self.assertIsNone(hostnames.bind_host_refusal(
            FQDN, SHORT, {SHORT: FQDN}))

    def test_a_short_provider_name(self):
        # The reverse: the agent's host is the FQDN, Nova's the short
        # name, which is also its node name.
        self.assertIsNone(hostnames.bind_host_refusal(
            SHORT, FQDN, {FQDN: SHORT}))

    def test_the_fqdn_of_a_short_agent_host(self):
        self.assertIsNone(refusal(FQDN, SHORT))

    def test_the_short_form_of_an_fqdn_agent_host(self):
        self.assertIsNone(refusal(SHORT, FQDN))

    def test_the_short_form_of_the_provider_name(self):
        self.assertIsNone(hostnames.bind_host_refusal(
            SHORT, 'node-7', {'node-7': FQDN}))

    def test_a_provider_name_other_hosts_share(self):
        # Agents of one machine share its default provider name.
        self.assertIsNone(hostnames.bind_host_refusal(
            FQDN, 'agent-a', {'agent-a': FQDN, 'agent-b': FQDN}))


class RefusedNamesTest(testtools.TestCase):

    def test_an_unknown_name(self):
        self.assertEqual('', refusal('cmp-2', SHORT))

    def test_another_fqdn_with_the_same_first_label(self):
        self.assertEqual('', refusal('cmp-1.other.org', FQDN))

    def test_another_hosts_name(self):
        self.assertEqual('; cmp-2 is another host',
                         refusal('cmp-2', SHORT, ['cmp-2']))

    def test_another_hosts_name_that_is_also_our_short_form(self):
        # 'cmp-1' is an agent of its own, whatever the FQDN of ours.
        self.assertEqual('; cmp-1 is another host',
                         hostnames.bind_host_refusal(
                             SHORT, 'agent-a', {'agent-a': FQDN, SHORT: None}))

    def test_a_short_name_of_two_hosts(self):
        self.assertEqual(
            '; cmp-1 may also name host cmp-1.lab.org',
            refusal(SHORT, FQDN, ['cmp-1.lab.org']))

    def test_a_short_form_of_another_hosts_provider_name(self):
        self.assertEqual(
            '; cmp-1.example.org may also name host node-9',
            hostnames.bind_host_refusal(
                FQDN, SHORT, {SHORT: None, 'node-9': FQDN}))

    def test_an_ip_address_has_no_short_form(self):
        self.assertEqual('', refusal('10', '10.0.0.1'))
        self.assertEqual('', refusal('10.0.0.1', '10'))


class NamesTest(testtools.TestCase):

    def test_short_name(self):
        self.assertEqual(SHORT, hostnames.short_name(FQDN))
        self.assertIsNone(hostnames.short_name(SHORT))
        self.assertIsNone(hostnames.short_name('192.0.2.1'))

    def test_host_names(self):
        self.assertEqual([SHORT, FQDN], hostnames.host_names(SHORT, FQDN))
        self.assertEqual([SHORT], hostnames.host_names(SHORT, SHORT))
        self.assertEqual([SHORT], hostnames.host_names(SHORT, None))
