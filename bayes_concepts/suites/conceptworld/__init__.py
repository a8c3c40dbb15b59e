"""ConceptWorld (Klinger et al.): grid scenes, concept definitions, experiments as protocols, published results, figures."""
from . import protocols, published  # noqa: F401  (register conceptworld-*; the seed's F1 tables)
