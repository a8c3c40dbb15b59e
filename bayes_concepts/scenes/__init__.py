"""Scenes: schema, array form, samplers, file formats and bit-sliced scene banks.

Public names::

    schema    Attribute, SceneSchema, CURI_SCHEMA, CLEVR_SCHEMA, CLEVR_RELATIONS,
              CLEVR_DIRECTIONS, CLEVR_RELATION_EPS
    codes     scenes_to_codes, codes_to_scene, check_codes, encode_scene,
              validate_scene, n_objects_of
    relations relations_from_positions, relationships_lists, relations_from_lists,
              direction_vectors
    samplers  sample_scenes, sample_clevr_scenes, sample_clevr_positions, SAMPLERS
    camera    project_points, pixels_to_bins
    io        read_scenes_jsonl, write_scenes_jsonl, load_clevr_scenes,
              check_relational_scene, scenes_to_arrays
    bank      SceneBank, pack_bits, unpack_bits, n_words_for
"""
from .schema import (CLEVR_DIRECTIONS, CLEVR_RELATION_EPS, CLEVR_RELATIONS, CLEVR_SCHEMA,
                     CURI_SCHEMA, Attribute, SceneSchema)
from .codes import (check_codes, codes_to_scene, encode_scene, n_objects_of,
                    scenes_to_codes, validate_scene)
from .camera import pixels_to_bins, project_points
from .relations import (direction_vectors, relations_from_lists, relations_from_positions,
                        relationships_lists)
from .samplers import SAMPLERS, sample_clevr_positions, sample_clevr_scenes, sample_scenes
from .io import (check_relational_scene, load_clevr_scenes, read_scenes_jsonl, scenes_to_arrays,
                 write_scenes_jsonl)
from .bank import SceneBank, n_words_for, pack_bits, unpack_bits

__all__ = [
    "Attribute", "SceneSchema", "CURI_SCHEMA", "CLEVR_SCHEMA",
    "CLEVR_RELATIONS", "CLEVR_DIRECTIONS", "CLEVR_RELATION_EPS",
    "scenes_to_codes", "codes_to_scene", "check_codes", "encode_scene",
    "validate_scene", "n_objects_of",
    "relations_from_positions", "relationships_lists", "relations_from_lists",
    "direction_vectors",
    "project_points", "pixels_to_bins",
    "SAMPLERS", "sample_scenes", "sample_clevr_scenes", "sample_clevr_positions",
    "read_scenes_jsonl", "write_scenes_jsonl", "load_clevr_scenes",
    "check_relational_scene", "scenes_to_arrays",
    "SceneBank", "pack_bits", "unpack_bits", "n_words_for",
]
