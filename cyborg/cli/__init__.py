"""``cyborg``, the admin command line (a cliff application).

``app`` builds the application and its keystoneauth session, ``client``
speaks HTTP to the API and turns its error envelope into one line,
``output`` shapes API documents for cliff's formatters, and one module per
command family holds the commands.
"""
