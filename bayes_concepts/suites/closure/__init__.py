"""CLOSURE (Bahdanau et al., 2019) on CLEVR: template programs, test families, protocols, published drops and figures."""
