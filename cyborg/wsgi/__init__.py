"""WSGI entry points for servers that host the app (uwsgi, mod_wsgi)."""
