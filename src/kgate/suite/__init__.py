"""`kgate suite`: many problems times many candidates, each candidate gated then verified in
processes of its own, with results kept per candidate and an honest summary across them."""

from kgate.suite.discover import Entry, discover
from kgate.suite.summary import Row, Summary, parse_fast_p, summarize

__all__ = ["Entry", "Row", "Summary", "discover", "parse_fast_p", "summarize"]
