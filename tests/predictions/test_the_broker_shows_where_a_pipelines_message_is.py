"""The sweeper's view of the broker, through the real Redis transport and a real worker: a
pipeline's message is found by its first task's id while it waits in its queue, then as
delivered and unacknowledged once a worker holds it (and that worker says it holds it),
and a delivered message no worker holds goes back to its queue. It fails when kombu or
Celery change how they keep a message (`predictions/broker_messages.py` reads them in place).
"""

from __future__ import annotations

import time
import uuid

import pytest
from celery import Signature, current_app

from predictions import broker_messages, signatures, worker_holdings
from predictions.worker_holdings import SCHEDULED
from tests.support.waiting import eventually

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


def own_queue() -> str:
    return f"recovery-test-{uuid.uuid4().hex[:8]}"


def test_a_message_is_found_queued_then_delivered_and_held(celery_worker: str):
    """A coordinator task of a request that does not exist, sent as a dispatch sends it (its
    own id the pipeline's root) to a queue nobody consumes yet, due in a minute: once the
    worker consumes that queue it holds the task unstarted meanwhile."""
    queue, root = own_queue(), str(uuid.uuid4())
    options = {"queue": queue, "countdown": 60, "expires": 90}
    signature = Signature(signatures.FETCH_PRICES, args=(str(uuid.uuid4()),), options=options)
    signature.apply_async(task_id=root)
    control = current_app.control
    try:
        [queued] = broker_messages.find([root], queues=[queue])
        assert (queued.task_id, queued.task, queued.where) == (root, signatures.FETCH_PRICES, queue)
        assert queued.queued and queued.delivered_at is None

        control.add_consumer(queue, destination=[celery_worker], reply=True, timeout=10)
        delivered = eventually(
            lambda: [m for m in broker_messages.find([root], queues=[queue]) if not m.queued],
            20,
            "the delivery",
        )
        [message] = delivered
        assert message.where == broker_messages.UNACKED and message.delivery_tag
        assert message.delivered_at is not None and abs(time.time() - message.delivered_at) < 30

        holdings = eventually(
            lambda: (h := worker_holdings.ask()).tasks.get(root) and h, 20, "the worker's answer"
        )
        held = holdings.tasks[root]
        assert (held.worker, held.state, held.task) == (celery_worker, SCHEDULED,
                                                         signatures.FETCH_PRICES)  # fmt: skip
        assert holdings.complete
    finally:
        control.revoke(root)
        control.cancel_consumer(queue, destination=[celery_worker], reply=True, timeout=10)


def test_a_delivered_message_no_worker_holds_goes_back_to_its_queue():
    """As a worker that died would leave it (here: a consumer that never acknowledges, on a
    queue of the test's own)."""
    queue, root = own_queue(), str(uuid.uuid4())
    signature = Signature(signatures.FETCH_PRICES, args=(str(uuid.uuid4()),),
                          options={"queue": queue, "expires": 60})  # fmt: skip
    signature.apply_async(task_id=root)
    with (
        current_app.connection_for_read() as connection,
        connection.SimpleQueue(current_app.amqp.queues[queue], no_ack=False) as taker,
    ):
        try:
            taker.get(timeout=10)  # delivered, never acknowledged
            [delivered] = broker_messages.find([root], queues=[queue])
            assert delivered.where == broker_messages.UNACKED

            broker_messages.restore(delivered)

            [back] = broker_messages.find([root], queues=[queue])
            assert (back.where, back.task_id, back.delivered_at) == (queue, root, None)
        finally:
            taker.clear()
