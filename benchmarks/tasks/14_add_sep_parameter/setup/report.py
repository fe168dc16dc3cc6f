from textutils import join_fields

TOTALS = {"north": 120, "south": 95, "east": 143}

if __name__ == "__main__":
    print(join_fields(["region", "total"]))
    for region, total in sorted(TOTALS.items()):
        print(join_fields([region, total]))
