"""Experiment records: workspace, families, slugs, and the git repository they live in."""
