"""The REST API service: WSGI pipeline, pecan controllers, server."""
