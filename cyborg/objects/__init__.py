"""Versioned objects: the data that crosses RPC."""


def register_all():
    # Importing a module registers its objects.
    __import__('cyborg.objects.driver_device')
    __import__('cyborg.objects.hardware')
    __import__('cyborg.objects.host')
    __import__('cyborg.objects.notification')
