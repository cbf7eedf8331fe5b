"""The cyborg release, as installed."""

from importlib import metadata


def version_string():
    try:
        return metadata.version('cyborg')
    except metadata.PackageNotFoundError:
        return 'unknown'
