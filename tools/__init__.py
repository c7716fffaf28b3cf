"""Developer tools run from the Makefile (screenshots of every page) and the page tour
they share with the browser tests."""
