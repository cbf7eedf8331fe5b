"""What the generic-driver resources of microversion 2.5 share: the
version that serves them (below it, ``MicroversionHook`` answers 404)."""

VERSION = '2.5'
