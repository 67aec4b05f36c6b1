"""The `leanreplay` console script; the commands live in `index.faces.cli`."""

from .faces.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    main()
