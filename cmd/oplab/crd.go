package main

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/oplab-dev/oplab/controller"
)

// crdApplyLine is what an administrator runs to install the Database CRD
// when oplab may not (--install-crds=false), from a checkout of oplab.
const crdApplyLine = "kubectl apply -f controller/config/crd/db.oplab.dev_databases.yaml"

// crdCheckInterval is how often oplab looks for its CRD. A CRD is deleted
// rarely and on purpose, so a cheap GET every few seconds is enough: the
// lab is without its Databases for that long at most.
const crdCheckInterval = 2 * time.Second

// keepCRD runs until ctx is done, looking for the Database CRD. When it is
// gone (deleted by an administrator, say), every Database went with it and
// the lab's creates fail. With mayInstall (the embedded cluster, or
// --install-crds), keepCRD installs it again, and the controller's
// informers find it on their next retry; otherwise it says, once per
// disappearance, what to run. Either way every viewer's timeline is told
// through sink.
func keepCRD(ctx context.Context, cfg *rest.Config, mayInstall bool, sink controller.Sink, log logr.Logger) {
	cs, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		log.Error(err, "Cannot watch the Database CRD")
		return
	}
	api := cs.ApiextensionsV1().CustomResourceDefinitions()
	missing := false
	t := time.NewTicker(crdCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		checkCtx, cancel := context.WithTimeout(ctx, readyTimeout*5)
		crd, err := api.Get(checkCtx, databasesCRD, metav1.GetOptions{})
		cancel()
		switch {
		case err == nil && crd.DeletionTimestamp == nil:
			if missing {
				missing = false
				log.Info("The Database CRD is back")
			}
			continue
		case err == nil:
			// Being deleted: its Databases are finalized first, and a
			// new one cannot be made until it is gone.
			continue
		case !apierrors.IsNotFound(err):
			continue // unreadable now; /readyz says so
		}
		if !mayInstall {
			if !missing {
				missing = true
				msg := fmt.Sprintf("The Database CRD %s was deleted, so the lab has no Databases and cannot create any. oplab may not install it here (--install-crds=false): an administrator must run %s", databasesCRD, crdApplyLine)
				log.Info(msg)
				emitCRDStep(sink, "crd-missing", msg)
			}
			continue
		}
		installCtx, cancel := context.WithTimeout(ctx, time.Minute)
		err = controller.InstallCRDs(installCtx, cfg)
		cancel()
		if err != nil {
			log.Error(err, "The Database CRD was deleted and could not be installed again")
			continue
		}
		log.Info("The Database CRD was deleted; installed it again")
		emitCRDStep(sink, "crd-reinstalled", fmt.Sprintf("The Database CRD %s was deleted (and every Database with it); oplab installed it again. Create your Databases anew.", databasesCRD))
	}
}

// emitCRDStep tells every viewer (a global step) about the CRD.
func emitCRDStep(sink controller.Sink, phase, msg string) {
	sink.Emit(controller.Step{
		Time: time.Now(), Type: controller.StepController,
		Object: controller.ObjectRef{Kind: "CustomResourceDefinition", Name: databasesCRD},
		Phase:  phase, Message: msg,
	})
}
