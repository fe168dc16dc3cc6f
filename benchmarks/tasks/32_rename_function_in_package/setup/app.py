from api import get_usr, list_users
from api.routes import handle

if __name__ == "__main__":
    print(get_usr(1)["name"], len(list_users()), len(list_users(admins_only=True)))
    print(handle("/users/2"), handle("/users/9"))
