"""The command line's shared options and argument types, and the registry of its commands."""
