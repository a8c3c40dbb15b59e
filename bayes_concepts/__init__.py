"""bayes_concepts: Bayesian oracles for few-shot compositional concept learning."""
__version__ = "0.1.0"
