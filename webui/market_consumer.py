"""A symbol's websocket: its new bars, new public forecasts and new scores, as they come.

Anyone may follow a symbol: what it carries is public (bars, and forecasts that were
asked anonymously or by the watchlist; a user's own forecasts are never announced). A
path that is not a symbol is refused with the not-found code. Its sockets count in the
process's websocket bounds, in all and per address, as every consumer's do
(`GroupMember` is a `BoundedConsumer`, webui/connections.py).
"""

from __future__ import annotations

import json
from typing import Any

from asgiref.sync import sync_to_async

from marketdata import market_clock
from marketdata.symbols import InvalidSymbol, normalize_symbol
from webui.consumers import NOT_FOUND, GroupMember
from webui.events.channel_groups import symbol_group


class SymbolConsumer(GroupMember):
    async def connect(self) -> None:
        try:
            self.symbol = normalize_symbol(str(self.scope["url_route"]["kwargs"]["symbol"]))
        except InvalidSymbol:
            await self.close(code=NOT_FOUND)
            return
        self.group = symbol_group(self.symbol)
        await self.join()
        await self.accept()
        clock = (await sync_to_async(market_clock.state)()).as_dict()
        await self.send(
            text_data=json.dumps({"type": "hello", "symbol": self.symbol, "clock": clock})
        )

    async def market_event(self, message: dict[str, Any]) -> None:
        await self.send(text_data=message["text"])
