"""The command line's command groups, one module each, registered in :data:`bayes_concepts.options.commands`."""
