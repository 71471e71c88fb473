"""Training: trainer loops with callbacks, and the command-line entry points."""
