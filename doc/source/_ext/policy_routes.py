"""``.. policy-routes::``: every API route with the policy rule that
guards it, its default and its scope, written at build time from the
table in ``cyborg/policies/__init__.py``, so the page cannot go stale."""

from sphinx.util.docutils import SphinxDirective

from cyborg import policies

HEADER = ('Route', 'Method', 'Rule', 'Default', 'Scope', 'Older check')


def _literal(text):
    return '``%s``' % text if text else ''


def _row(cells):
    first, *rest = cells
    return ['   * - ' + first] + ['     - ' + cell for cell in rest]


def table_lines(routes):
    """The reStructuredText list-table of ``routes``."""
    lines = ['.. list-table::', '   :header-rows: 1', '']
    lines += _row(HEADER)
    for route in routes:
        lines += _row([_literal(route.path), route.method,
                       _literal(route.rule), _literal(route.check_str),
                       ', '.join(route.scope_types),
                       _literal(route.deprecated_check_str)])
    return lines


class PolicyRoutes(SphinxDirective):
    """The table; it takes no arguments or content."""

    def run(self):
        self.env.note_dependency(policies.__file__)
        return self.parse_text_to_nodes('\n'.join(
            table_lines(policies.routes())))


def setup(app):
    app.add_directive('policy-routes', PolicyRoutes)
    return {'parallel_read_safe': True, 'parallel_write_safe': True}
