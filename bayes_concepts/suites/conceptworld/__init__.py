"""ConceptWorld (Klinger et al.): grid scenes, concept definitions, experiments as protocols, published results, figures."""
