"""The backend tests (a package, so that their modules never clash with e2e's)."""
