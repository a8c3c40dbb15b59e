"""A ConceptWorld space's concepts for the learned prior: a family, and for a family
instance its n, counted where the family is."""
from ...rungs.learned_prior import PartForm, part_forms

part_forms.register("conceptworld", PartForm(("concept", "n"), complete_only=False,
                                             description="ConceptWorld families"))
