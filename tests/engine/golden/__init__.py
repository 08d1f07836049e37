"""The engine golden corpus: recorded games, the recorder and the replay test (see README.md)."""
