"""DataChecks: copies across and within splits, and cheap image issues."""
