#!/usr/bin/env python3
"""Checks every relative link and anchor of a built mdBook: each `href` or `src` that is not
absolute must name a file of the book, and its `#fragment` an id in that file. Exits 1 listing
the broken ones; the Markdown files named after the book (README.md, ...) have their relative
links checked too. Reads the HTML mdbook wrote, so an anchor is checked against the id mdbook
gave the heading, not a guess at its rules. `print.html` repeats every page with rewritten
links and is skipped; absolute links (http:, https:, mailto:) are not fetched."""

import html.parser
import os
import re
import sys
import urllib.parse


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids = set()
        self.links = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("id", "name") and value:
                self.ids.add(value)
            if value is None:
                continue
            if (tag == "a" and name == "href") or (tag in ("img", "script") and name == "src"):
                self.links.append((tag, value, self.getpos()[0]))


def parse(path):
    page = Page()
    with open(path, encoding="utf-8") as f:
        page.feed(f.read())
    return page


def check_markdown(files):
    """The repository's own Markdown (README.md, SECURITY.md, ...) links into docs/src: each
    relative target must exist. Anchors are left to GitHub's rules, which differ from mdbook's."""
    broken = []
    for name in files:
        with open(name, encoding="utf-8") as f:
            text = f.read()
        for target in re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r'href="([^"]+)"', text):
            parts = urllib.parse.urlsplit(target)
            if parts.scheme or parts.netloc or not parts.path:
                continue
            path = os.path.normpath(os.path.join(os.path.dirname(name), parts.path))
            if not os.path.exists(path):
                broken.append(f"{name}: {target}: no such file")
    return broken


def main(book, markdown):
    if not os.path.isfile(os.path.join(book, "index.html")):
        sys.exit(f"check-links: no book at {book} (index.html missing)")
    pages = {}
    for dirpath, _, files in os.walk(book):
        for name in files:
            if name.endswith(".html"):
                path = os.path.normpath(os.path.join(dirpath, name))
                pages[path] = parse(path)
    broken = []
    checked = 0
    for path, page in sorted(pages.items()):
        if os.path.basename(path) in ("print.html", "toc.html"):
            continue
        for tag, link, line in page.links:
            parts = urllib.parse.urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith("javascript:"):
                continue
            checked += 1
            where = f"{os.path.relpath(path, book)}:{line}: {link}"
            target = path
            if parts.path:
                target = os.path.normpath(os.path.join(os.path.dirname(path),
                                                       urllib.parse.unquote(parts.path)))
                if os.path.isdir(target):
                    target = os.path.join(target, "index.html")
                if not os.path.commonpath([target, os.path.normpath(book)]) == os.path.normpath(book):
                    broken.append(f"{where}: leaves the book")
                    continue
                if not os.path.isfile(target):
                    broken.append(f"{where}: no such file")
                    continue
            if parts.fragment:
                ids = pages[target].ids if target in pages else set()
                if urllib.parse.unquote(parts.fragment) not in ids:
                    broken.append(f"{where}: no anchor #{parts.fragment}")
    broken += check_markdown(markdown)
    for b in broken:
        print(f"check-links: {b}", file=sys.stderr)
    if broken:
        sys.exit(f"check-links: {len(broken)} broken of {checked} relative links")
    print(f"check-links: {checked} relative links in {len(pages)} pages, all resolve")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "target/book", sys.argv[2:])
