from helpers import slugify

TITLES = ["Release Notes 2.0", "Q&A with the Team"]

if __name__ == "__main__":
    for title in TITLES:
        print(f"<item><link>https://example.org/posts/{slugify(title)}.html</link></item>")
