from datetime import date

from helpers import format_date, slugify

POSTS = [("Why We Moved to Python 3.12", date(2024, 1, 15)), ("Ten Tips: Faster CI!", date(2024, 2, 2))]

if __name__ == "__main__":
    for title, day in POSTS:
        print(f"/posts/{slugify(title)}.html  {format_date(day)}  {title}")
