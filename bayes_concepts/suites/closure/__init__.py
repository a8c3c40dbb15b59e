"""CLOSURE (Bahdanau et al., 2019) on CLEVR: its question families and CLEVR's question
templates as binary scene concepts, the ``clevr`` preset, the protocols ``closure`` and
``closure-baselines``, CLOSURE's reported accuracies and its figures.

- :mod:`.families`: CLOSURE's families (``hypotheses/closure/families.toml``), filled and
  instantiated as programs of the relational language;
- :mod:`.clevr_templates`: CLEVR's 90 question templates, likewise;
- :mod:`.reported`: the accuracies CLOSURE reports, drops and chance levels;
- :mod:`.presets`, :mod:`.protocols`, :mod:`.published`: what the suite registers.
"""
from .families import (ANSWER_KINDS, COUNT_ANSWERS, DEPTH_VARIABLES, ClosureFamilyError, Family, Filling, Instance,
                       default_families_path, family_concepts, family_instances, family_instances_of,
                       family_rejection, fill_instances, fill_programs, instantiate, load_families, render_question,
                       sample_filling, CLEVR_VALUES)
from .clevr_templates import (CLEVR_DEPTH_VARIABLES, CLEVR_TEMPLATE_FILES, ClevrFilling, ClevrTemplate, clevr_concepts,
                              clevr_fill_instances, clevr_filling, clevr_instances, clevr_rejection,
                              clevr_template_instances, default_clevr_templates_path, load_clevr_templates,
                              render_clevr_question, sample_clevr_filling, template_file_concepts)
from .reported import YES_NO_KINDS, Accuracy, FamilyDrop, Reported, answer_chance, family_drops, load_reported

__all__ = ["ANSWER_KINDS", "CLEVR_DEPTH_VARIABLES", "CLEVR_TEMPLATE_FILES", "CLEVR_VALUES", "COUNT_ANSWERS",
           "DEPTH_VARIABLES", "YES_NO_KINDS", "Accuracy", "ClevrFilling", "ClevrTemplate", "ClosureFamilyError",
           "Family", "FamilyDrop", "Filling", "Instance", "Reported", "answer_chance", "clevr_concepts",
           "clevr_fill_instances", "clevr_filling", "clevr_instances", "clevr_rejection", "clevr_template_instances",
           "default_clevr_templates_path", "default_families_path", "family_concepts", "family_drops",
           "family_instances", "family_instances_of", "family_rejection", "fill_instances", "fill_programs",
           "instantiate", "load_clevr_templates", "load_families", "load_reported", "render_clevr_question",
           "render_question", "sample_clevr_filling", "sample_filling", "template_file_concepts"]
