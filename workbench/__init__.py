"""workbench: replay recorded agent transcripts through context-compaction strategies and measure them."""

__version__ = "0.1.0"
