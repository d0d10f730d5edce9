"""The admission chain: webhook configurations, match conditions, the calls and their answers."""
