"""People: Shepard, Hovland and Jenkins's six types, fitted and predicted by the sequential ideal observer."""
