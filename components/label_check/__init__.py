"""LabelCheck: the records whose given class a held-out model doubts."""
