"""JSON Schemas of request bodies and query strings, one module per
resource (the resource's file name in every layer, STYLE.md), read by
``cyborg.api.validation``. ``common`` holds the types they share: each
string, list, object and integer is bounded as the database column it
ends in."""
