"""oslo.i18n integration for cyborg."""

import oslo_i18n

_translators = oslo_i18n.TranslatorFactory(domain='cyborg')

_ = _translators.primary
