"""Keep short notes from the terminal."""
