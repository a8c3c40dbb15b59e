"""ConceptWorld: hierarchical relational concepts on grids of coloured points."""
