"""BFCL `TwitterAPI` (func-doc file `posting_api.json`), rewritten from its function docs.

Tweets are keyed by the string form of their id, as the scenarios store them; `tweet_counter` gives
the next id so both checker instances number new tweets identically.
"""

from __future__ import annotations

from typing import Any

from . import Backend


class TwitterAPI(Backend):
    tool_names = frozenset(
        "authenticate_twitter comment follow_user get_tweet get_tweet_comments get_user_stats get_user_tweets "
        "list_all_following mention post_tweet posting_get_login_status retweet search_tweets unfollow_user".split()
    )
    defaults = {
        "username": "john",
        "password": "john123",
        "authenticated": False,
        "tweets": {},
        "comments": {},
        "retweets": {},
        "following_list": ["alice", "bob"],
        "tweet_counter": 0,
    }

    def _need_login(self) -> dict[str, Any] | None:
        return None if self.authenticated else {"error": "User not authenticated. Please authenticate before this action."}

    def _tweet(self, tweet_id: int) -> dict[str, Any] | None:
        return self.tweets.get(str(tweet_id))

    def authenticate_twitter(self, username: str, password: str) -> dict[str, Any]:
        self.authenticated = username == self.username and password == self.password
        return {"authentication_status": self.authenticated}

    def posting_get_login_status(self) -> dict[str, Any]:
        return {"login_status": bool(self.authenticated)}

    def post_tweet(self, content: str, tags: list[str] | None = None, mentions: list[str] | None = None) -> dict[str, Any]:
        if error := self._need_login():
            return error
        tweet = {"id": self.tweet_counter, "username": self.username, "content": content,
                 "tags": list(tags or []), "mentions": list(mentions or [])}  # fmt: skip
        self.tweets[str(self.tweet_counter)] = tweet
        self.tweet_counter += 1
        return dict(tweet)

    def retweet(self, tweet_id: int) -> dict[str, Any]:
        if error := self._need_login():
            return error
        if self._tweet(tweet_id) is None:
            return {"error": f"Tweet with ID {tweet_id} not found."}
        mine = self.retweets.setdefault(self.username, [])
        if tweet_id in mine:
            return {"retweet_status": "Already retweeted"}
        mine.append(tweet_id)
        return {"retweet_status": "Successfully retweeted"}

    def comment(self, tweet_id: int, comment_content: str) -> dict[str, Any]:
        if error := self._need_login():
            return error
        if self._tweet(tweet_id) is None:
            return {"error": f"Tweet with ID {tweet_id} not found."}
        self.comments.setdefault(str(tweet_id), []).append({"username": self.username, "comment": comment_content})
        return {"comment_status": "Comment added successfully"}

    def mention(self, tweet_id: int, mentioned_usernames: list[str]) -> dict[str, Any]:
        tweet = self._tweet(tweet_id)
        if tweet is None:
            return {"error": f"Tweet with ID {tweet_id} not found."}
        tweet["mentions"].extend(u for u in mentioned_usernames if u not in tweet["mentions"])
        return {"mention_status": "Users mentioned successfully"}

    def follow_user(self, username_to_follow: str) -> dict[str, Any]:
        if error := self._need_login():
            return error
        if username_to_follow in self.following_list:
            return {"follow_status": False}
        self.following_list.append(username_to_follow)
        return {"follow_status": True}

    def unfollow_user(self, username_to_unfollow: str) -> dict[str, Any]:
        if error := self._need_login():
            return error
        if username_to_unfollow not in self.following_list:
            return {"unfollow_status": False}
        self.following_list.remove(username_to_unfollow)
        return {"unfollow_status": True}

    def list_all_following(self) -> dict[str, Any]:
        if error := self._need_login():
            return error
        return {"following_list": list(self.following_list)}

    def get_tweet(self, tweet_id: int) -> dict[str, Any]:
        tweet = self._tweet(tweet_id)
        return dict(tweet) if tweet is not None else {"error": f"Tweet with ID {tweet_id} not found."}

    def get_tweet_comments(self, tweet_id: int) -> dict[str, Any]:
        if self._tweet(tweet_id) is None:
            return {"error": f"Tweet with ID {tweet_id} not found."}
        return {"comments": list(self.comments.get(str(tweet_id), []))}

    def get_user_tweets(self, username: str) -> dict[str, Any]:
        return {"user_tweets": [t for t in self.tweets.values() if t["username"] == username]}

    def search_tweets(self, keyword: str) -> dict[str, Any]:
        hits = [t for t in self.tweets.values() if keyword.lower() in t["content"].lower() or keyword in t["tags"]]
        return {"matching_tweets": hits}

    def get_user_stats(self, username: str) -> dict[str, Any]:
        return {
            "tweet_count": sum(t["username"] == username for t in self.tweets.values()),
            "following_count": len(self.following_list) if username == self.username else 0,
            "retweet_count": len(self.retweets.get(username, [])),
        }
