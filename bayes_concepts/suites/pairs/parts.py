"""A pair space's concepts for the learned prior: attribute-object pairs, counted only where
both parts are there (single-part concepts are primitives)."""
from ...rungs.learned_prior import PartForm, part_forms

part_forms.register("pairs", PartForm(("attribute", "object"), complete_only=True,
                                      description="attribute-object pairs"))
