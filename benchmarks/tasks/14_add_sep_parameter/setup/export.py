from textutils import join_fields

ROWS = [
    ["id", "name", "city"],
    [1, " Ada ", "London"],
    [2, "Linus", None],
    [3, "Grace", "Arlington"],
]

if __name__ == "__main__":
    for row in ROWS:
        print(join_fields(row))
