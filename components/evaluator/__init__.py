"""The Evaluator: TFX's, with a baseline that may hold no model, and the rule
that sets the accuracy a model needs to be blessed."""
