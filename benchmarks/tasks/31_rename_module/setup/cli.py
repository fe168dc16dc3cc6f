import db
from models import User

if __name__ == "__main__":
    User(1, "Ada").save()
    User(2, "Linus").save()
    print(User.load(1).name, User.load(2).name, User.load(3))
    print(sorted(db.connect()))
