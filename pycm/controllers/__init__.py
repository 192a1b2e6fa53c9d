"""The controllers pycm runs, one package each: ``controller.py`` (the controller, declaring its
watches on a :class:`~pycm.controller.ControllerBuilder`), ``client.py`` (its API calls on
:class:`~pycm.kube.Client`), ``descriptor.py`` (its ``DESCRIPTOR`` and ``init``, built through
the builder as a plugin is, with :mod:`pycm.controllers.builtin`'s helpers), and its sync's
own modules. :mod:`pycm.app.controllers` lists the
descriptors (docs/controllers.md, "Adding a built-in controller")."""
